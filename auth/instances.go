package auth

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/meshrx/meshrx/mesh"
)

// Where the instance registry lives on the mesh, and the node type of each
// kind of node. The content of each is a JSON object:
//
//	Registry/Keys/{HashPrefix(hash)}  InstanceKeyIndex  {"keyHash": "<64 hex>", "instance": "<id>"}
//	Registry/Instances/{id}           Instance          {"name": "...", "plan": "pro", "disabled": false, "keyHashes": ["<64 hex>", ...]}
//	Registry/Grants/{id}              PluginGrant       {"entries": ["Plugins/*@pro", ...], "grantedBy": "...", "updatedAt": "<RFC 3339>"}
//	Admin/Tiers/{tier}                PlanTier          {"rank": 2, "allAccess": false}
//
// A presented key is found through its index node, then checked again against
// the instance's own keyHashes, so removing a hash from the instance revokes
// the key even if its index node is left behind. Raw keys are never stored.
const (
	KeyIndexNamespace = "Registry/Keys"
	InstanceNamespace = "Registry/Instances"
	GrantNamespace    = "Registry/Grants"
	TierNamespace     = "Admin/Tiers"

	KeyIndexNodeType = "InstanceKeyIndex"
	InstanceNodeType = "Instance"
	GrantNodeType    = "PluginGrant"
	TierNodeType     = "PlanTier"
)

// maxInstanceIDLen keeps an instance id a short, URL-safe path segment.
const maxInstanceIDLen = 64

// Instance is a registered consumer of the registry: what its node says.
type Instance struct {
	ID        string   `json:"-"` // the last segment of its path
	Name      string   `json:"name"`
	Plan      string   `json:"plan"`
	Disabled  bool     `json:"disabled"`
	KeyHashes []string `json:"keyHashes"`
}

// HasKeyHash reports whether hash is one of the instance's current keys,
// comparing in constant time.
func (i *Instance) HasKeyHash(hash string) bool {
	found := false
	for _, h := range i.KeyHashes {
		// No early exit: the time taken does not say which key matched.
		if HashesEqual(h, hash) {
			found = true
		}
	}
	return found
}

// KeyIndexPath returns the path of the index node for a key hash.
func KeyIndexPath(hash string) string { return KeyIndexNamespace + "/" + HashPrefix(hash) }

// InstancePath returns the path of the instance node with id.
func InstancePath(id string) string { return InstanceNamespace + "/" + id }

// GrantPath returns the path of the grant node of the instance with id.
func GrantPath(id string) string { return GrantNamespace + "/" + id }

// TierPath returns the path of the node of plan tier id.
func TierPath(id string) string { return TierNamespace + "/" + canonicalPlan(id) }

// InstanceIDError reports an instance id that cannot name an instance.
type InstanceIDError struct {
	ID      string
	Problem string
}

func (e *InstanceIDError) Error() string {
	return fmt.Sprintf("auth: instance id %q: %s", e.ID, e.Problem)
}

// ValidateInstanceID reports whether id can name an instance: 1 to 64
// lower-case ASCII letters, digits, '.', '_' or '-', starting with a letter
// or digit, so it is one path segment and never a satellite ('_') or a
// relative ('.') name. An upper-case letter is refused: the store keeps
// paths that differ only in case as two nodes, while the name rule
// (mesh.EqualNames) and every query read them as one, so "Acme" beside
// "acme" would be two instances under one name. Every Instances method and
// the authenticator's read of a key's index node apply it.
func ValidateInstanceID(id string) error {
	switch {
	case id == "":
		return &InstanceIDError{ID: id, Problem: "blank"}
	case len(id) > maxInstanceIDLen:
		return &InstanceIDError{ID: id, Problem: fmt.Sprintf("longer than %d bytes", maxInstanceIDLen)}
	case !isAlnum(id[0]) && !isUpper(id[0]):
		return &InstanceIDError{ID: id, Problem: "must start with a letter or a digit"}
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case isUpper(c):
			return &InstanceIDError{ID: id, Problem: fmt.Sprintf("upper-case letter %q at %d: an instance id is lower case, so that two ids never differ only in case (%q)", c, i, mesh.FoldName(id))}
		case c >= 0x80:
			return &InstanceIDError{ID: id, Problem: fmt.Sprintf("byte 0x%02x at %d is not ASCII; an id is ASCII letters, digits, '.', '_' or '-'", c, i)}
		case !isAlnum(c) && c != '.' && c != '_' && c != '-':
			return &InstanceIDError{ID: id, Problem: fmt.Sprintf("character %q at %d is not a letter, digit, '.', '_' or '-'", c, i)}
		}
	}
	return nil
}

// isAlnum reports whether c is a lower-case ASCII letter or a digit.
func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z'
}

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }

// ContentError reports a registry node whose content cannot be read. It is
// not a fact about a key or a grant: the authenticator answers it as
// unavailable (503), never as unauthenticated.
type ContentError struct {
	Path     string
	NodeType string // the type the node was expected to have
	Problem  string
}

func (e *ContentError) Error() string {
	return fmt.Sprintf("auth: %s node %s: %s", e.NodeType, e.Path, e.Problem)
}

// keyIndexContent is the content of an InstanceKeyIndex node.
type keyIndexContent struct {
	KeyHash  string `json:"keyHash"`
	Instance string `json:"instance"`
}

// grantContent is the content of a PluginGrant node: entries in their text
// form, so that an operator can read and edit the node.
type grantContent struct {
	Entries   []string  `json:"entries"`
	GrantedBy string    `json:"grantedBy"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// tierContent is the content of a PlanTier node.
type tierContent struct {
	Rank      int  `json:"rank"`
	AllAccess bool `json:"allAccess"`
}

// decodeNode checks n's type and decodes its content into v.
func decodeNode(n mesh.Node, nodeType string, v any) error {
	if n.NodeType != nodeType {
		return &ContentError{Path: n.Path, NodeType: nodeType, Problem: fmt.Sprintf("has node type %q", n.NodeType)}
	}
	if len(n.Content) == 0 {
		return &ContentError{Path: n.Path, NodeType: nodeType, Problem: "has no content"}
	}
	if err := json.Unmarshal(n.Content, v); err != nil {
		return &ContentError{Path: n.Path, NodeType: nodeType, Problem: "content is not the expected JSON object: " + err.Error()}
	}
	return nil
}

// decodeKeyIndex reads an index node.
func decodeKeyIndex(n mesh.Node) (keyIndexContent, error) {
	var c keyIndexContent
	if err := decodeNode(n, KeyIndexNodeType, &c); err != nil {
		return c, err
	}
	if c.KeyHash == "" || ValidateInstanceID(c.Instance) != nil {
		return c, &ContentError{Path: n.Path, NodeType: KeyIndexNodeType, Problem: "keyHash or instance missing or invalid"}
	}
	return c, nil
}

// decodeInstance reads an instance node.
func decodeInstance(n mesh.Node) (*Instance, error) {
	inst := &Instance{}
	if err := decodeNode(n, InstanceNodeType, inst); err != nil {
		return nil, err
	}
	_, inst.ID = mesh.SplitPath(n.Path)
	return inst, nil
}

// decodeGrant reads a grant node. Entries that do not parse are returned as
// errors beside the grant made of the others: a grant only ever allows, so
// leaving an entry out narrows it and never widens it.
func decodeGrant(n mesh.Node, instanceID string) (PluginGrant, []error, error) {
	var c grantContent
	if err := decodeNode(n, GrantNodeType, &c); err != nil {
		return PluginGrant{}, nil, err
	}
	g := PluginGrant{InstanceID: instanceID, GrantedBy: c.GrantedBy, UpdatedAt: c.UpdatedAt}
	var bad []error
	for _, text := range c.Entries {
		e, err := ParseGrantEntry(text)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		g.Entries = append(g.Entries, e)
	}
	return g, bad, nil
}

// encodeInstance renders an instance's node content.
func encodeInstance(inst *Instance) (json.RawMessage, error) {
	c := *inst
	c.KeyHashes = slices.Clone(c.KeyHashes)
	if c.KeyHashes == nil {
		c.KeyHashes = []string{}
	}
	return encodeContent(c)
}

// encodeContent marshals node content. Only a time outside years 0–9999 can
// make it fail.
func encodeContent(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("auth: encoding registry content: %w", err)
	}
	return b, nil
}
