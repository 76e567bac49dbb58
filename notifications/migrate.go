package notifications

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/meshrx/meshrx/mesh"
)

// LegacyQuery finds the notifications to migrate. It is deliberately
// mesh-wide (partitions:all): rows stored the old way sit under whichever
// entity notified, in any partition, so no anchor can find them all. That is
// acceptable here and nowhere else because the migration is a one-off run by
// an operator, never on a render path, and it reads once instead of living.
const LegacyQuery = "nodeType:" + NodeType + " partitions:all"

// Report counts what MigrateLegacy did.
type Report struct {
	Scanned int // notifications read
	Moved   int // legacy rows now at their addressee, their old row deleted
	Skipped int // rows already delivered to an addressee: nothing to do
	Failed  int // legacy rows left where they were (see the error)
}

// MigrateLegacy moves notifications stored the old way, under the entity that
// notified ({entity}/_Notification/{id}), to their addressee, as Create
// would have delivered them: the first segment of their recipient, or Admin
// when the recipient is blank or names no usable partition (most legacy
// rows, plugin-update notices and import failures, have none: in the
// entity's partition no bell would read them), or Admin when the
// addressee's partition refuses the write for any reason other than
// unavailability. A row stored directly in a
// partition's container ({partition}/_Notification/{id}) is taken as
// delivered and left alone: that partition's bell reads it, and whether the
// partition is a user's cannot be told here. Each row is written at
// {addressee}/_Notification/{id}, with the same id and content (plus
// targetPath, when it had none, and movedFrom), before the old row is
// deleted, so a run stopped at any point loses nothing, and running it again
// finishes the job without doubling anything.
//
// A row that cannot be moved is left in place and counted as failed, with a
// *MoveError in the returned error; the others still move. When ctx ends the
// run stops and returns the report so far with ctx's error.
func (s *Service) MigrateLegacy(ctx context.Context) (Report, error) {
	var r Report
	if s.Mesh == nil {
		return r, noMesh()
	}
	rows, err := s.initial(ctx, LegacyQuery)
	if err != nil {
		return r, err
	}
	var errs []error
	for _, row := range rows {
		if err := ctx.Err(); err != nil {
			return r, fmt.Errorf("notifications: migration stopped after %d of %d rows: %w", r.Scanned, len(rows), err)
		}
		r.Scanned++
		if isDelivered(row.Path) {
			r.Skipped++
			continue
		}
		to, err := s.move(ctx, row)
		switch {
		case err == nil:
			r.Moved++
		case ctx.Err() != nil:
			return r, fmt.Errorf("notifications: migration stopped at %s: %w", row.Path, err)
		default:
			r.Failed++
			errs = append(errs, &MoveError{From: row.Path, To: to, Err: err})
			s.log().Warn("notifications: legacy notification not moved; it stays where it is",
				"path", row.Path, "to", to, "err", err)
		}
	}
	return r, errors.Join(errs...)
}

// move copies one legacy row to its addressee (unless an earlier run did)
// and then deletes it. It returns the addressed path.
func (s *Service) move(ctx context.Context, row mesh.Node) (string, error) {
	var n Notification
	if err := json.Unmarshal(row.Content, &n); err != nil {
		return "", fmt.Errorf("content is not a notification: %w", err)
	}
	_, id := mesh.SplitPath(row.Path)
	addressee, _ := ResolveAddressee(n.Recipient)
	to, err := s.copyTo(ctx, row, n, id, addressee)
	var conflict *ConflictError
	if err != nil && addressee != Admin && ctx.Err() == nil && !mesh.IsUnavailable(err) && !errors.As(err, &conflict) {
		// The partition refused it: to Admin, as Create delivers it.
		s.log().Warn("notifications: addressee refused the legacy notification; moving it to Admin",
			"from", row.Path, "addressee", addressee, "err", err)
		to, err = s.copyTo(ctx, row, n, id, Admin)
	}
	if err != nil {
		return to, err
	}
	return to, s.Mesh.Delete(ctx, row.Path)
}

// copyTo writes row, the legacy notification n with id, at addressee
// (unless an earlier run did), and returns the addressed path.
func (s *Service) copyTo(ctx context.Context, row mesh.Node, n Notification, id, addressee string) (string, error) {
	to := deliveryPath(addressee, id)
	held, ok, err := s.get(ctx, to)
	switch {
	case err != nil:
		return to, err
	case ok:
		var h Notification
		_ = json.Unmarshal(held.Content, &h) // undecodable: MovedFrom stays "" and it is a conflict
		// Exactly: paths are case-sensitive, and acme/docs is not acme/Docs.
		if h.MovedFrom != row.Path {
			return to, &ConflictError{Path: to, HeldFrom: h.MovedFrom, WantedFrom: row.Path}
		}
		// An earlier run copied it and stopped before deleting the old row.
	default:
		content := row.Content
		set := map[string]any{"id": id, "movedFrom": row.Path}
		if strings.TrimSpace(n.TargetPath) == "" {
			set["targetPath"] = mesh.OwnerOf(row.Path)
		}
		for k, v := range set {
			if content, _, err = withField(content, k, v); err != nil {
				return to, err
			}
		}
		if _, err := s.Mesh.Put(ctx, mesh.Node{
			Path:     to,
			NodeType: NodeType,
			Name:     row.Name,
			MainNode: addressee,
			State:    row.State,
			Content:  content,
		}); err != nil {
			return to, err
		}
	}
	return to, nil
}
