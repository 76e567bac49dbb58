// Package zerooptions holds no code: its test opens every exported Options
// and Config type of the module at its zero value (docs/security.md: a zero
// Options is the secure configuration).
package zerooptions
