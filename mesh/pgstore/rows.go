package pgstore

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/meshrx/meshrx/mesh"
)

// nodeColumns are the columns scanNode reads, in its order.
const nodeColumns = "namespace, id, path, name, node_type, main_node, content, version, state, last_modified"

// scanNode reads one row of nodeColumns.
func scanNode(row pgx.Row) (mesh.Node, error) {
	var (
		n                        mesh.Node
		path, name, typ, mainPth *string
		content                  []byte
		state                    int16
		modified                 time.Time
	)
	if err := row.Scan(&n.Namespace, &n.ID, &path, &name, &typ, &mainPth, &content, &n.Version, &state, &modified); err != nil {
		return mesh.Node{}, err
	}
	if state < 0 || state > 255 {
		return mesh.Node{}, fmt.Errorf("pgstore: node %s/%s has state %d, outside the range of mesh.State", n.Namespace, n.ID, state)
	}
	n.Path = deref(path)
	if n.Path == "" {
		n.Path = mesh.JoinPath(n.Namespace, n.ID)
	}
	n.Name, n.NodeType, n.MainNode = deref(name), deref(typ), deref(mainPth)
	if content != nil {
		n.Content = json.RawMessage(content)
	}
	n.State = mesh.State(state)
	n.LastModified = modified.UTC()
	return n, nil
}

func collectNode(row pgx.CollectableRow) (mesh.Node, error) { return scanNode(row) }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
