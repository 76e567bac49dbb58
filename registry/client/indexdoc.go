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

// SinceParam is the index's query parameter that asks for a delta: the
// digest (the ETag, unquoted) of the index the consumer holds. The answer
// is an [IndexDelta] (with [IndexSinceHeader]), 304 when the index held is
// the newest, or 410 Gone when the registry's history for the caller does
// not reach back to it: then the consumer fetches the whole index.
const SinceParam = "since"

// IndexSinceHeader marks an answer as an [IndexDelta]: its value is the
// digest the delta starts from.
const IndexSinceHeader = "X-Index-Since"

// IndexDelta is what changed in the caller's index since the one whose
// digest is Since: every entry added or changed (Bundles) and the names of
// the plugins no longer listed (Removed, compared without case), with the
// digest and entry count of the index they make. The digest is the ETag's:
// the root of a Merkle tree over the entries (see Client.Index for what is
// hashed).
type IndexDelta struct {
	Since   string       `json:"since"`
	Digest  string       `json:"digest"`
	Count   int          `json:"count"`
	Bundles []IndexEntry `json:"bundles"`
	Removed []string     `json:"removed"`
}
