// Package leakrule holds no code: its test checks that every package of the
// module has a TestMain that runs goleak.VerifyTestMain (directly, or
// through pgtest.Main, which wraps it), so that no package's tests can leave
// a goroutine behind unnoticed.
package leakrule
