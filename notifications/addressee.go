package notifications

import (
	"strconv"
	"strings"

	"github.com/meshrx/meshrx/mesh"
)

// Admin is the platform addressee: notifications for nobody in particular,
// and those whose recipient names no usable partition, are delivered here.
// Global admins see them in their bell.
const Admin = "Admin"

// Container is the satellite segment notifications are stored under.
const Container = "_Notification"

// ResolveAddressee returns the addressee of a recipient path: its first
// segment. A blank recipient, or one whose first segment cannot be a
// partition (invalid, or starting with _ and so unroutable or a global
// satellite), resolves to Admin: delivery fails closed, to someone who reads
// it. ok reports whether the recipient itself named the addressee.
func ResolveAddressee(recipient string) (addressee string, ok bool) {
	first := mesh.Partition(strings.TrimSpace(recipient))
	if !validAddressee(first) {
		return Admin, false
	}
	return first, true
}

// validAddressee reports whether a names a partition a notification can be
// delivered to.
func validAddressee(a string) bool {
	return a != "" && !strings.HasPrefix(a, "_") && !strings.Contains(a, "/") && mesh.ValidatePath(a) == nil
}

// checkViewer refuses a viewer that cannot have a bell of its own: one
// that names no partition, or names the Admin partition (in any ASCII
// case, as a partition query matches it). Admin's notifications are shown
// to global admins (Service.Admins) only: a user who happened to be named
// "admin" must not read them as its own.
func checkViewer(viewer string) error {
	switch {
	case !validAddressee(viewer):
		return &InvalidError{Field: "viewer", Value: viewer, Reason: "not a partition name"}
	case mesh.EqualNames(viewer, Admin):
		return &InvalidError{Field: "viewer", Value: viewer, Reason: "names the Admin partition, whose notifications only global admins see"}
	}
	return nil
}

// DeliveryNamespace returns the namespace notifications for addressee are
// stored in: {addressee}/_Notification.
func DeliveryNamespace(addressee string) string {
	return addressee + "/" + Container
}

// BellQuery returns the live query of one addressee's notifications, newest
// first. It is pinned to the addressee's partition.
func BellQuery(addressee string) string {
	return "namespace:" + queryValue(DeliveryNamespace(addressee)) + " nodeType:" + NodeType + " sort:content.createdAt-desc"
}

// RetentionQuery returns the query of the n least recently modified
// notifications in partition, the candidates retention removes first. It is
// pinned to the partition.
func RetentionQuery(partition string, n int) string {
	return "path:" + queryValue(partition) + " scope:descendants nodeType:" + NodeType +
		" sort:lastModified-asc limit:" + strconv.Itoa(n)
}

// queryValue is v as one value of the query language: bare when it is
// made of letters, digits and "._-/" only, quoted otherwise. A partition
// name may hold spaces, '|', quotes or parentheses, which bare would be
// query syntax ("eve|alice" an alternation reaching alice's partition).
func queryValue(v string) string {
	for i := 0; i < len(v); i++ {
		if c := v[i]; !isQueryBare(c) {
			return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
		}
	}
	return v
}

func isQueryBare(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("._-/", c) >= 0
}

// deliveryPath returns where the notification id for addressee is stored.
func deliveryPath(addressee, id string) string {
	return DeliveryNamespace(addressee) + "/" + id
}

// isDelivered reports whether the notification at path is stored the
// addressed way: directly in its partition's _Notification container.
func isDelivered(path string) bool {
	owner := mesh.OwnerOf(path)
	return owner != "" && !strings.Contains(owner, "/") && mesh.TableFor(path) == "notifications"
}
