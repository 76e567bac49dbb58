package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"time"
)

// writePollLog writes every poll and every publication of a run, one a
// line, ordered by their scheduled instant, as milliseconds since start
// (the measured run's; the warm-up's polls are negative):
//
//	poll <at_ms> <latency_ms> <status> <bytes>
//	publish <began_ms> <took_ms>
//
// so that a slow poll can be set beside what the publisher was doing then
// (-poll-log).
func writePollLog(name string, start time.Time, samples []sample, pub publishOutcome) error {
	type line struct {
		at   time.Duration
		text string
	}
	lines := make([]line, 0, len(samples)+len(pub.began))
	for _, s := range samples {
		at := s.at.Sub(start)
		lines = append(lines, line{at, fmt.Sprintf("poll %.3f %.3f %d %d", msf(at), msf(s.latency), s.status, s.bytes)})
	}
	for i, b := range pub.began {
		at := b.Sub(start)
		lines = append(lines, line{at, fmt.Sprintf("publish %.3f %.3f", msf(at), msf(pub.lasted[i]))})
	}
	slices.SortStableFunc(lines, func(a, b line) int { return int(a.at - b.at) })
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, l := range lines {
		fmt.Fprintln(w, l.text)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
