package client

// IndexPath is where the registry serves its bundle index.
const IndexPath = "/api/plugins/bundles/index.json"

// BundlesPath is the prefix of the bundle routes: a bundle downloads from
// BundlesPath + "/{plugin}/{version}".
const BundlesPath = "/api/plugins/bundles"

// Index is the document the registry serves at IndexPath: the bundles the
// caller may install.
type Index struct {
	Bundles []IndexEntry `json:"bundles"`
}

// IndexEntry is one installable bundle.
type IndexEntry struct {
	Plugin  string `json:"plugin"`
	Version string `json:"version"`
	URL     string `json:"url"`    // where the bundle downloads from: relative to the registry, or under its configured public URL
	SHA256  string `json:"sha256"` // hex digest of the bundle's bytes
}

// BundleDigestHeader carries a downloaded bundle's hex SHA-256, the digest
// the index lists for it.
const BundleDigestHeader = "X-Bundle-Sha256"
