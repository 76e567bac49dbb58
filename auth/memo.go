package auth

import (
	"bytes"
	"slices"
	"sync"

	"github.com/meshrx/meshrx/mesh"
)

// authMemo is what an Authenticator keeps between requests so that a key
// polled again costs less, without trusting anything it keeps over the
// mesh:
//
//   - decoded: for each instance or grant node read, its content and what
//     it decoded to. The node is read on every request as before; only
//     when its content is byte for byte what was decoded last is the
//     decoding (JSON, grant entries) skipped. A changed grant, a disabled
//     instance or a revoked key is new content: decoded and honoured by the
//     request that reads it.
//   - instances: for a key hash whose index node named an instance that
//     listed the hash, that instance. The index node is a lookup aid (the
//     instance's KeyHashes are the truth: a revocation removes the hash
//     there first, which refuses the key at once), so a request for a
//     known hash reads the instance directly; an instance that no longer
//     lists the hash (or is gone) drops the entry, and the request runs
//     every leg from the index node, as a new key does. Only hashes that
//     authenticated are kept: an unknown key costs what it did.
//
// Both maps are bounded (memoEntries each; a full map drops an arbitrary
// entry for a new one), decoded also by the bytes of the contents it keeps
// (memoBytes; a node larger than memoNodeBytes is not kept: nothing bounds
// a node's size), and they belong to the Authenticator: no package state.
type authMemo struct {
	mu           sync.Mutex
	decoded      map[string]decodedNode // by node path
	decodedBytes int                    // the contents' bytes in decoded
	instances    map[string]string      // key hash -> instance id
}

const (
	memoEntries   = 4096           // bounds each of an authMemo's maps
	memoBytes     = 8 << 20        // bounds the contents decoded keeps
	memoNodeBytes = memoBytes / 64 // the largest content decoded keeps
)

// decodedNode is a node's content and what it decoded to (*Instance or
// grantRead), which is shared by every request that reads that content
// and never modified.
type decodedNode struct {
	nodeType string
	content  []byte
	v        any
}

// decodedAs returns what n decoded to when n's content is the content
// decoded last at its path.
func (m *authMemo) decodedAs(n mesh.Node) (any, bool) {
	m.mu.Lock()
	d, ok := m.decoded[n.Path]
	m.mu.Unlock()
	if !ok || d.nodeType != n.NodeType || !bytes.Equal(d.content, n.Content) {
		return nil, false
	}
	return d.v, true
}

// keepDecoded keeps what n decoded to.
func (m *authMemo) keepDecoded(n mesh.Node, v any) {
	if len(n.Content) > memoNodeBytes {
		return
	}
	d := decodedNode{nodeType: n.NodeType, content: slices.Clone(n.Content), v: v}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.decoded == nil {
		m.decoded = map[string]decodedNode{}
	}
	if old, ok := m.decoded[n.Path]; ok {
		m.decodedBytes -= len(old.content)
		delete(m.decoded, n.Path)
	}
	for k, e := range m.decoded { // arbitrary entries, until d fits
		if len(m.decoded) < memoEntries && m.decodedBytes+len(d.content) <= memoBytes {
			break
		}
		m.decodedBytes -= len(e.content)
		delete(m.decoded, k)
	}
	m.decoded[n.Path] = d
	m.decodedBytes += len(d.content)
}

// instanceOf returns the instance a key hash authenticated as last.
func (m *authMemo) instanceOf(hash string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id, ok := m.instances[hash]
	return id, ok
}

// keepInstance notes that hash's index node named instance id, which lists
// the hash.
func (m *authMemo) keepInstance(hash, id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.instances == nil {
		m.instances = map[string]string{}
	}
	makeRoom(m.instances, hash)
	m.instances[hash] = id
}

// forgetInstance drops what instanceOf knew of hash.
func (m *authMemo) forgetInstance(hash string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.instances, hash)
}

// makeRoom drops an arbitrary entry of a full map that does not hold key.
func makeRoom[V any](m map[string]V, key string) {
	if _, ok := m[key]; ok || len(m) < memoEntries {
		return
	}
	for k := range m {
		delete(m, k)
		return
	}
}
