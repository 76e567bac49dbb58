package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// summary is the last line of the report, the numbers the issue asks for.
type summary struct {
	PinnedLocks      int
	FanOutLocks      int
	PinnedP50ms      float64
	FanOutP50ms      float64
	WriterP99Alone   float64
	WriterP99Pinned  float64
	WriterP99FanOut  float64
	RequeriesTyped   int64
	RequeriesUntyped int64
	// Reads that failed beside the writer (phase c), by reader kind.
	ReadsFailedPinned int64
	ReadsFailedFanOut int64
}

// summaryKeys are the summary line's keys, in their order.
func summaryKeys() []string {
	return []string{"pinned_locks", "fanout_locks", "pinned_p50_ms", "fanout_p50_ms",
		"writer_p99_alone_ms", "writer_p99_pinned_ms", "writer_p99_fanout_ms",
		"requeries_typed", "requeries_untyped", "reads_failed_pinned", "reads_failed_fanout"}
}

func (r result) summary() summary {
	return summary{
		PinnedLocks:       r.pinnedLocks,
		FanOutLocks:       r.fanOutLocks,
		PinnedP50ms:       ms(r.pinnedRead.percentile(50)),
		FanOutP50ms:       ms(r.fanOutRead.percentile(50)),
		WriterP99Alone:    ms(r.alone.writer.percentile(99)),
		WriterP99Pinned:   ms(r.pinned.writer.percentile(99)),
		WriterP99FanOut:   ms(r.fanOut.writer.percentile(99)),
		RequeriesTyped:    r.typed.count,
		RequeriesUntyped:  r.untyped.count,
		ReadsFailedPinned: r.pinned.readers.failed,
		ReadsFailedFanOut: r.fanOut.readers.failed,
	}
}

// String formats the summary line (without a newline).
func (s summary) String() string {
	values := []string{
		strconv.Itoa(s.PinnedLocks), strconv.Itoa(s.FanOutLocks),
		msText(s.PinnedP50ms), msText(s.FanOutP50ms),
		msText(s.WriterP99Alone), msText(s.WriterP99Pinned), msText(s.WriterP99FanOut),
		strconv.FormatInt(s.RequeriesTyped, 10), strconv.FormatInt(s.RequeriesUntyped, 10),
		strconv.FormatInt(s.ReadsFailedPinned, 10), strconv.FormatInt(s.ReadsFailedFanOut, 10),
	}
	var b strings.Builder
	b.WriteString("summary:")
	for i, k := range summaryKeys() {
		fmt.Fprintf(&b, " %s=%s", k, values[i])
	}
	return b.String()
}

func msText(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// parseSummary reads a line String wrote: every key once, in order.
func parseSummary(line string) (summary, error) {
	rest, ok := strings.CutPrefix(line, "summary: ")
	if !ok {
		return summary{}, fmt.Errorf("not a summary line (no %q prefix): %q", "summary: ", line)
	}
	fields := strings.Fields(rest)
	keys := summaryKeys()
	if len(fields) != len(keys) {
		return summary{}, fmt.Errorf("summary has %d fields, want %d (%s): %q", len(fields), len(keys), strings.Join(keys, " "), line)
	}
	var s summary
	ints := map[string]*int{"pinned_locks": &s.PinnedLocks, "fanout_locks": &s.FanOutLocks}
	int64s := map[string]*int64{"requeries_typed": &s.RequeriesTyped, "requeries_untyped": &s.RequeriesUntyped,
		"reads_failed_pinned": &s.ReadsFailedPinned, "reads_failed_fanout": &s.ReadsFailedFanOut}
	floats := map[string]*float64{"pinned_p50_ms": &s.PinnedP50ms, "fanout_p50_ms": &s.FanOutP50ms,
		"writer_p99_alone_ms": &s.WriterP99Alone, "writer_p99_pinned_ms": &s.WriterP99Pinned, "writer_p99_fanout_ms": &s.WriterP99FanOut}
	for i, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k != keys[i] {
			return summary{}, fmt.Errorf("summary field %d is %q, want %s=…", i+1, f, keys[i])
		}
		var err error
		switch {
		case ints[k] != nil:
			*ints[k], err = strconv.Atoi(v)
		case int64s[k] != nil:
			*int64s[k], err = strconv.ParseInt(v, 10, 64)
		default:
			*floats[k], err = strconv.ParseFloat(v, 64)
		}
		if err != nil {
			return summary{}, fmt.Errorf("summary field %s: %w", k, err)
		}
	}
	return s, nil
}

// print writes the table, one row per measurement, and the summary line
// last.
func (r result) print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "phase\tmeasurement\tvalue\tunit\tsamples\tnote")
	row := func(phase, what, value, unit string, samples int, note string) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", phase, what, value, unit, samples, note)
	}
	pct := func(phase, what string, l latencies, p float64, note string) {
		row(phase, fmt.Sprintf("%s p%g", what, p), msText(ms(l.percentile(p))), "ms", l.count(), note)
	}
	row("setup", "nodes written", strconv.Itoa(r.filled), "nodes", r.filled, "")
	pct("a", "pinned read (namespace:pNNN nodeType:Item)", r.pinnedRead, 50, "Initial of Store.Query, after one untimed read of each")
	pct("a", "pinned read (namespace:pNNN nodeType:Item)", r.pinnedRead, 99, "")
	pct("a", "fan-out read (nodeType:Item partitions:all)", r.fanOutRead, 50, "interleaved with the pinned reads")
	pct("a", "fan-out read (nodeType:Item partitions:all)", r.fanOutRead, 99,
		fmt.Sprintf("answers %d nodes from %d partition schemas", r.fanOutNodes, r.fanOutParts))
	row("b", "relation locks held, pinned read", strconv.Itoa(r.pinnedLocks), "locks", 1, "one table and its indexes; a backend has 16 fast-path slots")
	row("b", "relation locks held, fan-out read", strconv.Itoa(r.fanOutLocks), "locks", 1, "the node tables an Item can be in (type routing), of every partition, and their indexes")
	for _, c := range []struct {
		what string
		run  besideRun
	}{{"writer insert, alone", r.alone}, {"writer insert, beside pinned readers", r.pinned}, {"writer insert, beside fan-out readers", r.fanOut}} {
		pct("c", c.what, c.run.writer, 50, besideNote(c.run))
		pct("c", c.what, c.run.writer, 99, "")
		if c.run.readers.ok+c.run.readers.failed > 0 {
			note := ""
			if c.run.readers.first != "" {
				note = "first: " + c.run.readers.first
			}
			row("c", "reads failed, "+strings.TrimPrefix(c.what, "writer insert, "), strconv.FormatInt(c.run.readers.failed, 10), "reads",
				int(c.run.readers.ok+c.run.readers.failed), note)
		}
	}
	for _, d := range []struct {
		what string
		r    requeries
	}{{"re-reads, typed feed", r.typed}, {"re-reads, untyped feed", r.untyped}} {
		note := fmt.Sprintf("samples = notices; %d (notice, live query) pairs skipped", d.r.skipped)
		if d.r.ended.failed > 0 {
			note += fmt.Sprintf("; %d live queries ended early, first: %s", d.r.ended.failed, d.r.ended.first)
		}
		row("d", d.what, strconv.FormatInt(d.r.count, 10), "re-reads", int(d.r.notices), note)
	}
	for _, p := range r.scale {
		pct("e", fmt.Sprintf("pinned read at %d nodes (Store.Query)", p.nodes), p.store, 50,
			fmt.Sprintf("%d Items among %d nodes; keys of %d rows backfilled in %s", scaleItems, p.nodes, p.backfilled, p.backfill.Round(time.Millisecond)))
		pct("e", fmt.Sprintf("hand-written indexed SQL at %d nodes", p.nodes), p.handSQL, 50, "interleaved with the line above")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.scale) > 0 {
		fmt.Fprintf(w, "hand-written SQL of phase e:\n%s\n", scaleSQL)
	}
	for _, p := range r.scale {
		sp, hp := ms(p.store.percentile(50)), ms(p.handSQL.percentile(50))
		ratio := 0.0
		if hp > 0 {
			ratio = sp / hp
		}
		fmt.Fprintf(w, "scale: nodes=%d store_p50_ms=%s sql_p50_ms=%s ratio=%s\n", p.nodes, msText(sp), msText(hp), strconv.FormatFloat(ratio, 'f', 2, 64))
	}
	_, err := fmt.Fprintln(w, r.summary())
	return err
}

func besideNote(run besideRun) string {
	note := fmt.Sprintf("inserts failed: %d", run.writes.failed)
	if run.writes.first != "" {
		note += " (first: " + run.writes.first + ")"
	}
	if run.readers.ok+run.readers.failed > 0 {
		note += fmt.Sprintf("; reads beside: %d done, %d failed", run.readers.ok, run.readers.failed)
		if run.readers.first != "" {
			note += " (first: " + run.readers.first + ")"
		}
	}
	return note
}
