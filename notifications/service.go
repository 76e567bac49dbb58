package notifications

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/benbjohnson/clock"

	"github.com/meshrx/meshrx/auth/access"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// DefaultRetention is how many notifications an addressee keeps when
// Service.Retention is not set.
const DefaultRetention = 200

// pruneRounds bounds the reads one Prune makes to find its victims.
const pruneRounds = 3

// GlobalAdmins decides whether a user is a global admin, who also sees the
// notifications delivered to Admin. Only access.Allowed counts: Denied and
// Undetermined (the decision could not be made) both leave the Admin
// notifications out. IsGlobalAdmin must return when ctx is done.
type GlobalAdmins interface {
	IsGlobalAdmin(ctx context.Context, user string) access.Decision
}

// GlobalAdminsFunc adapts a function to GlobalAdmins.
type GlobalAdminsFunc func(ctx context.Context, user string) access.Decision

// IsGlobalAdmin calls f(ctx, user).
func (f GlobalAdminsFunc) IsGlobalAdmin(ctx context.Context, user string) access.Decision {
	return f(ctx, user)
}

// Service delivers notifications to their addressees and serves each viewer's
// bell. Set its fields before first use and do not change them afterwards;
// it is then safe for concurrent use. Only Mesh is required.
type Service struct {
	// Mesh stores the notifications.
	Mesh mesh.Store
	// Clock stamps CreatedAt and bounds the service's waits; nil means the
	// real clock.
	Clock clock.Clock
	// Admins decides who sees the Admin notifications; nil means nobody.
	Admins GlobalAdmins
	// Retention is how many notifications each addressee keeps; older ones
	// (least recently modified first) are removed after each Create. Zero or
	// less means DefaultRetention.
	Retention int
	// Budgets bound the service's waits; the zero value means
	// mesh.DefaultBudgets. A read waits at most Nested (so the store's own,
	// shorter, initial budget trips first with its own error); the global
	// admin check waits at most Permission.
	Budgets mesh.Budgets
	// Logger receives the service's warnings; nil means slog.Default().
	Logger *slog.Logger

	adminMu sync.Mutex
	admins  *adminFeed // the shared read of the Admin notifications, while a bell reads it
}

func (s *Service) clock() clock.Clock {
	if s.Clock == nil {
		return clock.New()
	}
	return s.Clock
}

func (s *Service) budgets() mesh.Budgets {
	if s.Budgets == (mesh.Budgets{}) {
		return mesh.DefaultBudgets()
	}
	return s.Budgets
}

func (s *Service) log() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

func (s *Service) retention() int {
	if s.Retention <= 0 {
		return DefaultRetention
	}
	return s.Retention
}

// noMesh is the error of every call on a Service without its store.
func noMesh() error { return &ConfigError{Setting: "Service.Mesh", Problem: "is not set"} }

// Create delivers n to the addressee of each recipient path (its first
// segment) at {addressee}/_Notification/{id}, and returns the stored nodes.
// Recipients that resolve to one addressee get one notification; no
// recipients, or a blank, invalid or unroutable one, means Admin (see
// ResolveAddressee). A write an addressee's partition refuses for any reason
// other than unavailability is delivered to Admin instead.
//
// Create sets ID (a hash of n.Identity when set, so the same identity
// replaces its earlier notification; random otherwise), CreatedAt (the
// clock's time), Recipient and IsRead; Type "" means General. It fails with
// an *InvalidError, writing nothing, for a blank title, an unknown type, or
// a title, message, icon, target, creator or recipient that is not UTF-8 or
// holds a NUL (a blank recipient is no such input: it means Admin).
// Deliveries that fail are reported as *DeliveryError values joined into the
// error; the others still happen. After each delivery the addressee is pruned
// to the retention cap; a pruning failure is logged, not returned.
func (s *Service) Create(ctx context.Context, n Notification, recipients ...string) ([]mesh.Node, error) {
	if s.Mesh == nil {
		return nil, noMesh()
	}
	typ, err := ParseType(string(n.Type))
	if err != nil {
		return nil, err
	}
	n.Type = typ
	if n.Title = strings.TrimSpace(n.Title); n.Title == "" {
		return nil, &InvalidError{Field: "title", Value: n.Title, Reason: "a notification needs a title"}
	}
	// Checked here, not left to the store: its refusal would be taken for
	// the addressee's partition refusing it, and the notification sent to
	// Admin instead.
	for _, f := range [...]struct{ field, v string }{{"title", n.Title}, {"message", n.Message}, {"icon", n.Icon},
		{"targetPath", n.TargetPath}, {"createdBy", n.CreatedBy}} {
		if !utf8.ValidString(f.v) || strings.ContainsRune(f.v, 0) {
			return nil, &InvalidError{Field: f.field, Value: f.v, Reason: "must be UTF-8 text without NUL characters"}
		}
	}
	// A recipient is stored too (Recipient): all are checked before the
	// first delivery, so a bad one writes nothing anywhere.
	for _, r := range recipients {
		if !utf8.ValidString(r) || strings.ContainsRune(r, 0) {
			return nil, &InvalidError{Field: "recipient", Value: r, Reason: "must be UTF-8 text without NUL characters"}
		}
	}
	n.ID = newID()
	if n.Identity != "" {
		n.ID = identityID(n.Identity)
	}
	n.CreatedAt = s.clock().Now().UTC()
	n.IsRead = false
	if len(recipients) == 0 {
		recipients = []string{""}
	}

	var nodes []mesh.Node
	var errs []error
	delivered := map[string]bool{} // addressees, by mesh.FoldName
	for _, r := range recipients {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		r = strings.TrimSpace(r)
		addressee, named := ResolveAddressee(r)
		if !named && r != "" {
			s.log().Warn("notifications: recipient names no partition; delivering to Admin",
				"recipient", r, "id", n.ID)
		}
		if delivered[mesh.FoldName(addressee)] {
			continue
		}
		n.Recipient = r
		node, err := s.deliver(ctx, n, addressee)
		if err != nil && addressee != Admin && ctx.Err() == nil && !mesh.IsUnavailable(err) {
			s.log().Warn("notifications: addressee refused the notification; delivering to Admin",
				"addressee", addressee, "id", n.ID, "err", err)
			addressee = Admin
			if delivered[mesh.FoldName(addressee)] {
				continue
			}
			node, err = s.deliver(ctx, n, addressee)
		}
		delivered[mesh.FoldName(addressee)] = true
		if err != nil {
			errs = append(errs, &DeliveryError{Addressee: addressee, Path: deliveryPath(addressee, n.ID), Err: err})
			continue
		}
		nodes = append(nodes, node)
		if _, err := s.Prune(ctx, addressee); err != nil {
			s.log().Warn("notifications: retention failed", "addressee", addressee, "err", err)
		}
	}
	return nodes, errors.Join(errs...)
}

func (s *Service) deliver(ctx context.Context, n Notification, addressee string) (mesh.Node, error) {
	content, err := n.content()
	if err != nil {
		return mesh.Node{}, err
	}
	return s.Mesh.Put(ctx, mesh.Node{
		Path:     deliveryPath(addressee, n.ID),
		NodeType: NodeType,
		Name:     n.Title,
		MainNode: addressee,
		Content:  content,
	})
}

// MarkRead marks the viewer's notification id as read. Only the viewer's own
// notifications can be marked (not the Admin ones a global admin sees),
// those delivered under another ASCII spelling of the viewer's partition
// included, as the bell shows them. It fails with *NotFoundError when the
// viewer has no such notification and *InvalidError for a viewer or id that
// cannot name one (Admin, in any case, is no viewer: see Bell). Marking a read notification again writes nothing. The write is a compare-and-set on the
// version read, so a notification replaced or deleted meanwhile is read
// again (NotFoundError once deleted), never written back.
func (s *Service) MarkRead(ctx context.Context, viewer, id string) error {
	if s.Mesh == nil {
		return noMesh()
	}
	if err := checkViewer(viewer); err != nil {
		return err
	}
	if strings.Contains(id, "/") || mesh.ValidatePath(id) != nil {
		return &InvalidError{Field: "id", Value: id, Reason: "not a notification id"}
	}
	path := deliveryPath(viewer, id)
	// A compare-and-set on the version read: a plain Put would write back
	// a notification replaced (same identity) or deleted since the read.
	for attempt := 1; ; attempt++ {
		node, ok, err := s.own(ctx, viewer, id)
		if err != nil {
			return fmt.Errorf("notifications: mark %s read: %w", path, err)
		}
		if !ok || !mesh.EqualNames(node.NodeType, NodeType) {
			return &NotFoundError{Viewer: viewer, ID: id}
		}
		content, changed, err := withField(node.Content, "isRead", true)
		if err != nil {
			return fmt.Errorf("notifications: mark %s read: stored content: %w", path, err)
		}
		if !changed {
			return nil
		}
		node.Content = content
		_, err = s.Mesh.PutIfVersion(ctx, node, node.Version)
		if conflict := (*mesh.VersionConflictError)(nil); errors.As(err, &conflict) && attempt < maxMarkAttempts {
			continue // changed since the read: read it again
		}
		if err != nil {
			return fmt.Errorf("notifications: mark %s read: %w", path, err)
		}
		return nil
	}
}

// own reads the viewer's notification id: at deliveryPath(viewer, id), or,
// when none is there, delivered under another ASCII spelling of the
// viewer's partition ("Alice/_Notification/id" for "alice"): the same
// partition, which the viewer's bell reads (BellQuery matches it).
func (s *Service) own(ctx context.Context, viewer, id string) (mesh.Node, bool, error) {
	path := deliveryPath(viewer, id)
	node, ok, err := s.get(ctx, path)
	if err != nil || ok {
		return node, ok, err
	}
	nodes, err := s.initial(ctx, "path:"+queryValue(path))
	if err != nil {
		return mesh.Node{}, false, err
	}
	for _, n := range nodes {
		// Only the partition's spelling may differ: query matching folds
		// the rest too, but there another spelling is another node.
		p := mesh.Partition(n.Path)
		if mesh.EqualNames(p, viewer) && n.Path[len(p):] == path[len(viewer):] {
			return n, true, nil
		}
	}
	return mesh.Node{}, false, nil
}

// maxMarkAttempts bounds how often MarkRead reads a notification again
// after another writer changed it between its read and its write.
const maxMarkAttempts = 8

// Prune removes the addressee's least recently modified notifications beyond
// the retention cap and reports how many it removed. It reads the
// addressee's notifications (BellQuery) to count them and RetentionQuery for
// the oldest; both are pinned to the addressee's partition. Rows in the
// partition that are not delivered notifications (legacy rows under an
// entity, waiting for MigrateLegacy) are never removed.
func (s *Service) Prune(ctx context.Context, addressee string) (removed int, err error) {
	if s.Mesh == nil {
		return 0, noMesh()
	}
	if !validAddressee(addressee) {
		return 0, &InvalidError{Field: "addressee", Value: addressee, Reason: "not a partition name"}
	}
	current, err := s.initial(ctx, BellQuery(addressee))
	if err != nil {
		return 0, err
	}
	excess := len(current) - s.retention()
	if excess <= 0 {
		return 0, nil
	}
	ns := DeliveryNamespace(addressee)
	var victims []mesh.Node
	for limit, round := excess, 0; round < pruneRounds; round++ {
		oldest, err := s.initial(ctx, RetentionQuery(addressee, limit))
		if err != nil {
			return 0, err
		}
		victims = victims[:0]
		for _, n := range oldest {
			if got, _ := mesh.SplitPath(n.Path); mesh.EqualNames(got, ns) {
				victims = append(victims, n)
			}
		}
		if len(victims) >= excess || len(oldest) < limit {
			break
		}
		// Legacy rows took some of the places: ask again with room for them.
		limit = excess + len(oldest) - len(victims)
	}
	for _, v := range victims[:min(excess, len(victims))] {
		if err := s.Mesh.Delete(ctx, v.Path); err != nil {
			return removed, fmt.Errorf("notifications: prune %s: %w", v.Path, err)
		}
		removed++
	}
	return removed, nil
}

// initial reads the Initial frame of q, bounded by Budgets.Nested.
func (s *Service) initial(ctx context.Context, q string) ([]mesh.Node, error) {
	stage := "initial frame of " + q
	ch, err := rx.First(ctx, rx.TimeoutStage(s.Mesh.Query(q), stage, s.budgets().Nested, s.clock()))
	switch {
	case err != nil:
		return nil, fmt.Errorf("notifications: %s: %w", stage, err)
	case ch.Kind != mesh.Initial:
		return nil, fmt.Errorf("notifications: %s: the store sent %s first", stage, ch.Kind)
	}
	return ch.Items, nil
}

// get reads the node at path, bounded by Budgets.Nested; ok is false when it
// is absent.
func (s *Service) get(ctx context.Context, path string) (node mesh.Node, ok bool, err error) {
	node, err = rx.First(ctx, rx.TimeoutStage(s.Mesh.Get(path), "read "+path, s.budgets().Nested, s.clock()))
	switch {
	case errors.Is(err, rx.ErrEmpty):
		return mesh.Node{}, false, nil
	case err != nil:
		return mesh.Node{}, false, err
	}
	return node, true, nil
}

// adminCheck arms the global admin check of viewer, bounded by
// Budgets.Permission on the service's clock from now, and returns the
// check, which asks Admins (under ctx, and the budget) and may be run on
// another goroutine. The budget is armed on the caller's goroutine, as the
// subscription starts: the bell runs the check beside its subscriber.
func (s *Service) adminCheck(ctx context.Context, viewer string) func() access.Decision {
	budget := s.budgets().Permission
	ctx, cancel := context.WithCancelCause(ctx)
	timer := s.clock().AfterFunc(budget, func() {
		cancel(&rx.TimeoutError{Stage: "global admin check", After: budget})
	})
	return func() access.Decision {
		defer cancel(nil)
		defer timer.Stop()
		d := s.Admins.IsGlobalAdmin(ctx, viewer)
		// A check cut short by Unsubscribe is the viewer leaving: nobody is
		// left to see the bell, so there is nothing to warn about.
		if d == access.Undetermined && !errors.Is(context.Cause(ctx), errUnsubscribed) {
			s.log().Warn("notifications: could not tell whether the viewer is a global admin; "+
				"the bell leaves the Admin notifications out", "viewer", viewer, "cause", context.Cause(ctx))
		}
		return d
	}
}

// withField returns the JSON object raw with key set to v, keeping every
// other field as stored, and whether that changed anything.
func withField(raw json.RawMessage, key string, v any) (json.RawMessage, bool, error) {
	obj := map[string]json.RawMessage{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, false, err
		}
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return nil, false, err
	}
	if old, ok := obj[key]; ok && string(old) == string(enc) {
		return raw, false, nil
	}
	obj[key] = enc
	out, err := json.Marshal(obj)
	return out, true, err
}
