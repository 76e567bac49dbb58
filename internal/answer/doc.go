// Package answer makes an HTTP route answer within a declared deadline or
// refuse, naming what it waited on.
//
// A request carries a [Ledger] from its [Arrival]; each wait enters it as a
// named stage ([InStage]). A route wrapped in a [Deadline] answers within
// its budget or refuses with 503 + Retry-After, naming in its body and in
// one warning the stages it was still waiting on. [SetRetryAfter] and
// [DefaultRetryAfter] are the one place this module spells a Retry-After:
// the registry, auth's middleware and examples/bell all write theirs here.
//
// A nil *slog.Logger means slog.Default().
package answer
