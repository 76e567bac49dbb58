package sqlgen

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/meshrx/meshrx/mesh"
)

// Columns lists the columns every statement Build returns selects, in the
// order ScanNode reads them.
const Columns = "namespace, id, path, name, node_type, main_node, content, version, state, last_modified"

// ScanError reports a row that cannot be read as a node.
type ScanError struct {
	Path   string // the row's path, when it was read
	Column string // the offending column, or "" when the row could not be read at all
	Reason string
	Err    error // the driver's error, if any
}

func (e *ScanError) Error() string {
	msg := "sqlgen: reading a node row"
	if e.Path != "" {
		msg += fmt.Sprintf(" at %q", e.Path)
	}
	if e.Column != "" {
		msg += ": " + e.Column
	}
	msg += ": " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *ScanError) Unwrap() error { return e.Err }

// ScanNode reads one row of a statement from Build (a pgx.Rows positioned
// on a row, or a pgx.Row). NULL name, node type and main node read as "".
// It fails with a *ScanError for a row mesh cannot hold, which the SQL
// Build generates assumes never exists: an id containing '/', a state
// without a name, or an infinite last_modified.
func ScanNode(row pgx.Row) (mesh.Node, error) {
	var (
		n                        mesh.Node
		name, nodeType, mainNode pgtype.Text
		content                  []byte
		state                    int16
		modified                 pgtype.Timestamptz
	)
	err := row.Scan(&n.Namespace, &n.ID, &n.Path, &name, &nodeType, &mainNode, &content, &n.Version, &state, &modified)
	if err != nil {
		return mesh.Node{}, &ScanError{Reason: "the row could not be scanned", Err: err}
	}
	bad := func(column, reason string) (mesh.Node, error) {
		return mesh.Node{}, &ScanError{Path: n.Path, Column: column, Reason: reason}
	}
	if strings.Contains(n.ID, "/") {
		return bad("id", "an id is one path segment")
	}
	if state < 0 || state > 255 {
		return bad("state", fmt.Sprintf("%d is not a node state", state))
	}
	n.State = mesh.State(state)
	if _, err := n.State.MarshalText(); err != nil {
		return bad("state", fmt.Sprintf("%d is not a node state", state))
	}
	if !modified.Valid || modified.InfinityModifier != pgtype.Finite {
		return bad("last_modified", "the time is not a finite instant")
	}
	n.Name, n.NodeType, n.MainNode = name.String, nodeType.String, mainNode.String
	n.LastModified = modified.Time
	if content != nil {
		n.Content = json.RawMessage(content)
	}
	return n, nil
}
