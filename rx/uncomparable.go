package rx

import (
	"fmt"
	"reflect"
	"runtime"
)

// UncomparableError ends the stream of an operator that compares values
// with == or keeps them as map keys (DistinctUntilChanged, Distinct,
// DistinctBy, Contains, SequenceEqual, ToMap, GroupBy) where Go's == (or
// map hashing) would panic. A type argument that is an interface (any,
// error, ...), or a struct or array holding one, satisfies comparable, yet
// may carry a slice, map or func at run time.
//
// The map-based operators (Distinct, DistinctBy, ToMap, GroupBy) hash every
// value (key), which panics on any uncomparable dynamic type: such a value
// fails the stream when it arrives. The operators that compare pairs
// (DistinctUntilChanged, Contains, SequenceEqual) fail only where the ==
// they run would panic, as Go's == does: when both sides hold the same
// uncomparable dynamic type (two values of different dynamic types are
// simply unequal, and a value never compared fails nothing). Then With
// says what the value was compared with and Other holds it. In both cases
// the values before were delivered and the source is unsubscribed. Match
// it with errors.As.
//
// For every other comparable type the compiler has already checked ==, and
// the operators make no check per value (decided once, when the operator is
// built).
type UncomparableError struct {
	Op    string       // the operator, e.g. "DistinctUntilChanged"
	What  string       // what it was to compare: "value", "key", "value of b"
	Type  reflect.Type // the dynamic type == cannot compare, e.g. []int
	Value any          // the value (or key) holding it
	With  string       // for a pair: what Value was compared with, e.g. "argument v"; "" for a key
	Other any          // for a pair: the value it was compared with, also holding Type
}

func (e *UncomparableError) Error() string {
	if e.With != "" {
		return fmt.Sprintf("rx.%s: cannot compare a %s with %s: both hold a %s (== is not defined on it)", e.Op, e.What, e.With, e.Type)
	}
	return fmt.Sprintf("rx.%s: cannot compare a %s holding a %s (== is not defined on it)", e.Op, e.What, e.Type)
}

// equalChecked is a == b for the operators that compare pairs over a T
// that mayHoldUncomparable reports, with the error of operator op (a as
// what, b as with) where that == panics instead of the panic. Whether ==
// panics depends on both dynamic types and on where == stops in an array
// (at the first unequal element), so the == itself is the check: its
// runtime panic is recovered. Values that compare cost a deferred call, no
// allocation.
func equalChecked[T comparable](op, what, with string, a, b T) (eq bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(runtime.Error); !ok {
				panic(p) // not =='s: == panics with runtime errors only
			}
			err = pairError(op, what, with, a, b)
		}
	}()
	return a == b, nil
}

// pairError is the error of an == of a and b that panicked.
func pairError[T any](op, what, with string, a, b T) error {
	t := sharedUncomparable(reflect.ValueOf(&a).Elem(), reflect.ValueOf(&b).Elem())
	if t == nil { // not expected: == panicked, so such a place exists
		if t = uncomparableIn(reflect.ValueOf(&a).Elem()); t == nil {
			t = uncomparableIn(reflect.ValueOf(&b).Elem())
		}
	}
	return &UncomparableError{Op: op, What: what, Type: t, Value: any(a), With: with, Other: any(b)}
}

// sharedUncomparable returns a dynamic type == cannot compare that a and b
// (of one static type) both hold at the same place, where == panics, or
// nil.
func sharedUncomparable(a, b reflect.Value) reflect.Type {
	switch a.Kind() {
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return nil
		}
		a, b = a.Elem(), b.Elem()
		if a.Type() != b.Type() {
			return nil
		}
		if !a.Type().Comparable() {
			return a.Type()
		}
		return sharedUncomparable(a, b)
	case reflect.Array:
		for i := range a.Len() {
			if t := sharedUncomparable(a.Index(i), b.Index(i)); t != nil {
				return t
			}
		}
	case reflect.Struct:
		for i := range a.NumField() {
			if a.Type().Field(i).Name == "_" {
				continue // == skips blank fields
			}
			if t := sharedUncomparable(a.Field(i), b.Field(i)); t != nil {
				return t
			}
		}
	}
	return nil
}

// mayHoldUncomparable reports whether a value of type T can hold a dynamic
// type that == cannot compare: T is an interface, or a struct or array with
// one inside. The operators call it once, when built.
func mayHoldUncomparable[T any]() bool { return holdsInterface(reflect.TypeFor[T]()) }

func holdsInterface(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Array:
		return holdsInterface(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if holdsInterface(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}

// uncomparable returns the error of operator op for v (a value or key, as
// what says) when v holds a dynamic type that == cannot compare, and nil
// otherwise: the check of the map-based operators, whose hashing panics on
// such a v whatever it is compared with. It is called only for the types
// mayHoldUncomparable reports:
// an interface T costs no allocation; a struct or array T holding one is
// boxed for reflect, one allocation per value.
func uncomparable[T any](op, what string, v T) error {
	x := any(v)
	if x == nil {
		return nil
	}
	if t := uncomparableIn(reflect.ValueOf(x)); t != nil {
		return &UncomparableError{Op: op, What: what, Type: t, Value: x}
	}
	return nil
}

// uncomparableIn returns the first type inside v on which == panics, or nil.
func uncomparableIn(v reflect.Value) reflect.Type {
	t := v.Type()
	if !t.Comparable() {
		return t
	}
	switch v.Kind() {
	case reflect.Interface:
		if !v.IsNil() {
			return uncomparableIn(v.Elem())
		}
	case reflect.Array:
		if k := t.Elem().Kind(); k == reflect.Interface || k == reflect.Struct || k == reflect.Array {
			for i := range v.Len() {
				if u := uncomparableIn(v.Index(i)); u != nil {
					return u
				}
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Field(i)
			if k := f.Kind(); k == reflect.Interface || k == reflect.Struct || k == reflect.Array {
				if u := uncomparableIn(f); u != nil {
					return u
				}
			}
		}
	}
	return nil
}
