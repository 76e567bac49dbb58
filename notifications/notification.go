package notifications

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/meshrx/meshrx/mesh"
)

// NodeType is the node type of a notification.
const NodeType = "Notification"

// Type says what kind of event a notification reports.
type Type string

// The notification types.
const (
	General          Type = "General"
	ApprovalRequired Type = "ApprovalRequired"
	ApprovalGiven    Type = "ApprovalGiven"
	ApprovalRejected Type = "ApprovalRejected"
	AccessGranted    Type = "AccessGranted"
	ChatReady        Type = "ChatReady"
	System           Type = "System"
)

// Types returns every notification type, in declaration order.
func Types() []Type {
	return []Type{General, ApprovalRequired, ApprovalGiven, ApprovalRejected, AccessGranted, ChatReady, System}
}

// ParseType returns the Type named s, ignoring ASCII case (the name rule
// of mesh.EqualNames: "Syſtem" is no type); "" is General.
func ParseType(s string) (Type, error) {
	if strings.TrimSpace(s) == "" {
		return General, nil
	}
	for _, t := range Types() {
		if mesh.EqualNames(string(t), s) {
			return t, nil
		}
	}
	return "", &InvalidError{Field: "type", Value: s, Reason: "not a notification type; use one of " + typeList()}
}

func typeList() string {
	names := make([]string, 0, len(Types()))
	for _, t := range Types() {
		names = append(names, string(t))
	}
	return strings.Join(names, ", ")
}

// Notification is one notification, as stored in a node's content.
type Notification struct {
	ID      string `json:"id"`
	Title   string `json:"title"`
	Message string `json:"message"`
	Icon    string `json:"icon"`
	// TargetPath is the entity the notification is about: the node that
	// notified, or one of its satellites.
	TargetPath string `json:"targetPath"`
	// Recipient is the recipient path the notification was sent to; its
	// first segment is the addressee.
	Recipient string    `json:"recipient"`
	Type      Type      `json:"type"`
	CreatedBy string    `json:"createdBy"`
	CreatedAt time.Time `json:"createdAt"`
	IsRead    bool      `json:"isRead"`
	// MovedFrom is the path a migrated notification was stored at before
	// MigrateLegacy moved it to its addressee; "" for one delivered there.
	MovedFrom string `json:"movedFrom,omitempty"`

	// Identity, when set on Create, makes the id a hash of it: creating the
	// same identity again replaces the earlier notification instead of
	// adding one, so a repeated condition shows once. It is not stored.
	Identity string `json:"-"`
	// Addressee is the partition the notification was read from; it is
	// filled by the bell and not stored.
	Addressee string `json:"-"`
}

// Source returns the entity a notification is about, the key the bell groups
// by: the owner of TargetPath (a satellite target counts as its owner).
func (n Notification) Source() string {
	return mesh.OwnerOf(strings.TrimSpace(n.TargetPath))
}

// content encodes n as a node's content. CreatedAt is written in UTC with
// nanoseconds: the bell sorts by it (sort:createdAt-desc compares RFC 3339
// times as times), and whole seconds would tie notifications created together.
func (n Notification) content() (json.RawMessage, error) {
	n.CreatedAt = n.CreatedAt.UTC()
	return json.Marshal(n)
}

// decode reads the notification stored in node. Content that is not a
// notification still yields one (titled by the node's name, with the id from
// its path), so a damaged row stays visible instead of vanishing from the
// bell; ok reports whether the content decoded.
func decode(node mesh.Node) (n Notification, ok bool) {
	ok = len(node.Content) > 0 && json.Unmarshal(node.Content, &n) == nil
	if !ok {
		n = Notification{Title: node.Name, CreatedAt: node.LastModified}
	}
	_, id := mesh.SplitPath(node.Path)
	n.ID = id // the path is authoritative; content may be stale or absent
	if n.Title == "" {
		n.Title = node.Name
	}
	n.Addressee = mesh.Partition(node.Path)
	return n, ok
}

// newID returns a fresh random id: 128 bits, hex.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// identityID returns the id a notification with identity gets: the same
// identity gives the same id, so the write upserts.
func identityID(identity string) string {
	sum := sha256.Sum256([]byte("meshrx/notifications/identity\x00" + identity))
	return hex.EncodeToString(sum[:16])
}
