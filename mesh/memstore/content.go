package memstore

import (
	"bytes"
	"encoding/json"
	"math/big"
)

// sameContent reports whether two JSON documents mean the same: key order,
// whitespace and the spelling of numbers (1, 1.0, 1e0) do not matter. Absent
// content and null are the same.
func sameContent(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	va, okA := decodeJSON(a)
	vb, okB := decodeJSON(b)
	return okA && okB && sameValue(va, vb)
}

func decodeJSON(raw json.RawMessage) (any, bool) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

func sameValue(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		// big.Float keeps a huge exponent as an exponent; big.Rat would expand it.
		fx, okX := new(big.Float).SetPrec(512).SetString(string(x))
		fy, okY := new(big.Float).SetPrec(512).SetString(string(y))
		return okX && okY && fx.Cmp(fy) == 0
	}
	return a == b // string, bool, nil
}
