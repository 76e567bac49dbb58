package mesh

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Project returns n with only the fields sel names set (canonical names,
// as Query.Select holds them), and its Path, which is how later frames
// name it. A content property (content.a.b) keeps the value at that path
// inside a content object holding the selected properties only, matched as
// a query matches it (exactly, else case-insensitively); an array on the
// way keeps, per element, what lies at the rest of the path. An empty sel
// returns n unchanged. n itself is never changed.
func Project(n Node, sel []string) Node {
	if len(sel) == 0 {
		return n
	}
	out := Node{Path: n.Path}
	var props [][]string
	for _, f := range sel {
		switch f {
		case "id":
			out.ID = n.ID
		case "namespace":
			out.Namespace = n.Namespace
		case "path":
		case "name":
			out.Name = n.Name
		case "nodeType":
			out.NodeType = n.NodeType
		case "mainNode":
			out.MainNode = n.MainNode
		case "state":
			out.State = n.State
		case "version":
			out.Version = n.Version
		case "lastModified":
			out.LastModified = n.LastModified
		case "content":
			out.Content = n.Content
			props = nil
		default:
			if prop, ok := strings.CutPrefix(f, "content."); ok && out.Content == nil {
				props = append(props, strings.Split(prop, "."))
			}
		}
	}
	if len(props) > 0 {
		out.Content = projectContent(n.Content, props)
	}
	return out
}

// projectContent is raw with only the properties at props, or nil when
// raw holds none of them (or is no JSON object).
func projectContent(raw json.RawMessage, props [][]string) json.RawMessage {
	src, ok := decodeContent(raw).(map[string]any)
	if !ok {
		return nil
	}
	dst := map[string]any{}
	for _, segs := range props {
		pick(src, dst, segs)
	}
	if len(dst) == 0 {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the stored bytes' meaning, not a page's escaping
	if enc.Encode(dst) != nil {
		return nil
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// pick copies into dst what src holds at segs, under the keys src spells
// them with (the key collectValues would match).
func pick(src, dst map[string]any, segs []string) {
	for _, k := range matchingKeys(src, segs[0]) {
		v := src[k]
		if len(segs) == 1 {
			dst[k] = v
			continue
		}
		switch t := v.(type) {
		case map[string]any:
			sub, _ := dst[k].(map[string]any)
			if sub == nil {
				sub = map[string]any{}
			}
			pick(t, sub, segs[1:])
			if len(sub) > 0 {
				dst[k] = sub
			}
		case []any:
			if arr := pickEach(t, segs[1:], dst[k]); arr != nil {
				dst[k] = arr
			}
		}
	}
}

// pickEach projects each object of arr to segs, merged into prev (what an
// earlier selection kept of the same array); nil when nothing is kept.
func pickEach(arr []any, segs []string, prev any) []any {
	kept, _ := prev.([]any)
	if kept == nil {
		kept = make([]any, len(arr))
	}
	found := false
	for i, e := range arr {
		obj, ok := e.(map[string]any)
		if !ok {
			continue
		}
		sub, _ := kept[i].(map[string]any)
		if sub == nil {
			sub = map[string]any{}
		}
		pick(obj, sub, segs)
		if len(sub) > 0 {
			kept[i], found = sub, true
		}
	}
	if !found && prev == nil {
		return nil
	}
	return kept
}

// matchingKeys is the key of m named seg exactly, else those equal to it
// case-insensitively: as a query's content condition matches them.
func matchingKeys(m map[string]any, seg string) []string {
	if _, ok := m[seg]; ok {
		return []string{seg}
	}
	var keys []string
	for k := range m {
		if strings.EqualFold(k, seg) {
			keys = append(keys, k)
		}
	}
	return keys
}

// projectFrame is c with its items projected to sel, in a new slice: the
// frame's nodes may be shared with other subscribers.
func projectFrame(sel []string) func(Change) Change {
	return func(c Change) Change {
		if len(c.Items) == 0 {
			return c
		}
		items := make([]Node, len(c.Items))
		for i, n := range c.Items {
			items[i] = Project(n, sel)
		}
		c.Items = items
		return c
	}
}
