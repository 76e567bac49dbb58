// Package notifications delivers notifications to the people they are for and
// reads them back as a live bell.
//
// A notification is written to its addressee's partition, at
// {addressee}/_Notification/{id}, with the entity that notified in
// TargetPath. The addressee is the first segment of a recipient path; a
// recipient that names no usable partition is delivered to Admin, so a
// notification is never lost and never lands somewhere nobody reads.
//
// Because every notification for a viewer lives in the viewer's own
// partition, the bell is made of pinned reads only: the viewer's own
// namespace, plus the Admin namespace for a global admin. Each is one
// partition schema; none is an alternation or a fan-out.
//
//	svc := &notifications.Service{Mesh: store, Clock: clock.New(), Admins: admins}
//	svc.Create(ctx, notifications.Notification{Title: "Build failed", TargetPath: "acme/ci"}, "alice")
//	sub := svc.Bell("alice").Subscribe(rx.NewObserver(render, fail, nil))
//
// MigrateLegacy moves notifications stored the old way, under the entity that
// notified, to their addressees.
//
// # Logging
//
// Every *slog.Logger option of this package (Service.Logger) may be nil, which
// means slog.Default(): nothing is discarded unless the caller says so.
//
// # Examples
//
// ExampleService_Bell (example_test.go) is a worked example,
// compiled by go test. go doc does not print examples: read them in the file,
// on pkgsite, or run them with go test -run Example ./notifications/.
package notifications
