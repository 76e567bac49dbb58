package rx

import "fmt"

// NotificationKind says which of the three notifications a Notification is.
type NotificationKind uint8

// The kinds of notification, as Rx.NET's NotificationKind.
const (
	OnNextKind NotificationKind = iota
	OnErrorKind
	OnCompletedKind
)

func (k NotificationKind) String() string {
	switch k {
	case OnNextKind:
		return "OnNext"
	case OnErrorKind:
		return "OnError"
	case OnCompletedKind:
		return "OnCompleted"
	}
	return fmt.Sprintf("NotificationKind(%d)", uint8(k))
}

// Notification is one notification of a stream as a value: what
// Materialize emits, Dematerialize reads and ToChannel sends. Value is set
// for OnNextKind, Err for OnErrorKind.
type Notification[T any] struct {
	Kind  NotificationKind
	Value T
	Err   error
}

func (n Notification[T]) String() string {
	switch n.Kind {
	case OnNextKind:
		return fmt.Sprintf("OnNext(%v)", n.Value)
	case OnErrorKind:
		return fmt.Sprintf("OnError(%v)", n.Err)
	}
	return n.Kind.String() + "()"
}
