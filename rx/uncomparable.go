package rx

import (
	"fmt"
	"reflect"
)

// UncomparableError ends the stream of an operator that compares values
// with == or keeps them as map keys (DistinctUntilChanged, Distinct,
// DistinctBy, Contains, SequenceEqual, ToMap, GroupBy) when a value (or key)
// holds a dynamic type that == cannot compare. A type argument that is an
// interface (any, error, ...), or a struct or array holding one, satisfies
// comparable, yet may carry a slice, map or func at run time, on which Go's
// == panics. Such a value fails the stream when it reaches the operator,
// before it is compared: the values before it were delivered, and the
// source is unsubscribed. Match it with errors.As.
//
// For every other comparable type the compiler has already checked ==, and
// the operators make no check per value (decided once, when the operator is
// built).
type UncomparableError struct {
	Op    string       // the operator, e.g. "DistinctUntilChanged"
	What  string       // what it was to compare: "value", "key" or "argument v"
	Type  reflect.Type // the dynamic type == cannot compare, e.g. []int
	Value any          // the value (or key) holding it
}

func (e *UncomparableError) Error() string {
	return fmt.Sprintf("rx.%s: cannot compare a %s holding a %s (== is not defined on it)", e.Op, e.What, e.Type)
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
// otherwise. It is called only for the types mayHoldUncomparable reports:
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
