package notifications

import (
	"fmt"
	"strconv"
)

// ConfigError reports a Service field a call cannot work without. Nothing
// was read or written.
type ConfigError struct {
	Setting string // e.g. "Service.Mesh"
	Problem string
}

func (e *ConfigError) Error() string { return "notifications: " + e.Setting + " " + e.Problem }

// InvalidError reports input the service refuses: a notification, viewer or
// id that cannot be used. Nothing was written.
type InvalidError struct {
	Field  string // what was wrong: "title", "type", "viewer", "id", ...
	Value  string // the value as given
	Reason string
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("notifications: invalid %s %s: %s", e.Field, clip(e.Value), e.Reason)
}

// NotFoundError reports a notification that is not among the viewer's own.
type NotFoundError struct {
	Viewer string
	ID     string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("notifications: %s has no notification %s", clip(e.Viewer), clip(e.ID))
}

// DeliveryError reports a notification that could not be written to one
// addressee. The others were still delivered.
type DeliveryError struct {
	Addressee string
	Path      string
	Err       error
}

func (e *DeliveryError) Error() string {
	return fmt.Sprintf("notifications: deliver to %s (%s): %v", clip(e.Addressee), e.Path, e.Err)
}

func (e *DeliveryError) Unwrap() error { return e.Err }

// MoveError reports a legacy notification MigrateLegacy could not move. The
// row was left where it was: nothing is lost, and a later run retries it.
type MoveError struct {
	From, To string // the legacy path and the addressed path
	Err      error
}

func (e *MoveError) Error() string {
	return fmt.Sprintf("notifications: move %s to %s: %v", e.From, e.To, e.Err)
}

func (e *MoveError) Unwrap() error { return e.Err }

// ConflictError reports an addressed path already holding a different
// notification than the legacy one about to be moved there.
type ConflictError struct {
	Path       string // the addressed path
	HeldFrom   string // where the notification there was moved from; "" if it was delivered there
	WantedFrom string // the legacy path that wanted the slot
}

func (e *ConflictError) Error() string {
	held := strconv.Quote(e.HeldFrom)
	if e.HeldFrom == "" {
		held = "a notification delivered there"
	}
	return fmt.Sprintf("notifications: %s already holds %s, not the one from %s", e.Path, held, e.WantedFrom)
}

// clip quotes s for a message, shortened so that a huge input does not flood
// a log.
func clip(s string) string {
	const limit = 80
	if len(s) > limit {
		s = s[:limit] + "…"
	}
	return strconv.Quote(s)
}
