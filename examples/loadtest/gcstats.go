package main

import (
	"runtime/metrics"
	"time"
)

// gcSample is what the collector had done by one instant.
type gcSample struct {
	at     time.Time
	cycles uint64
	pauses *metrics.Float64Histogram // stop-the-world pauses for GC, in seconds
	alloc  uint64                    // bytes allocated so far
	live   uint64                    // the heap the last cycle marked live, in bytes
	cpu    float64                   // CPU seconds the collector used so far (marking, assists, pauses)
	assist float64                   // of which goroutines spent assisting the mark
	// Of cpu, the mark workers' time on Ps the scheduler gave them
	// (dedicated and fractional workers, and the pauses): time taken from
	// the goroutines that were runnable then; and on Ps that had nothing
	// else to run (idle workers).
	busyMark, idleMark float64
	scan               uint64 // the heap's bytes a mark may scan (objects with pointers), at the last cycle
}

func readGC() gcSample {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/sched/pauses/total/gc:seconds"}, {Name: "/gc/heap/allocs:bytes"},
		{Name: "/gc/heap/live:bytes"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/cpu/classes/gc/mark/assist:cpu-seconds"},
		{Name: "/cpu/classes/gc/mark/dedicated:cpu-seconds"}, {Name: "/cpu/classes/gc/mark/idle:cpu-seconds"}, {Name: "/gc/scan/heap:bytes"}}
	metrics.Read(s)
	return gcSample{at: time.Now(), cycles: s[0].Value.Uint64(), pauses: s[1].Value.Float64Histogram(), alloc: s[2].Value.Uint64(),
		live: s[3].Value.Uint64(), cpu: s[4].Value.Float64(), assist: s[5].Value.Float64(),
		busyMark: s[6].Value.Float64(), idleMark: s[7].Value.Float64(), scan: s[8].Value.Uint64()}
}

// gcDuring is what the collector did between two samples: cycles, bytes
// allocated, and the longest stop-the-world pause (the upper bound of the
// highest histogram bucket that gained a count).
type gcDuring struct {
	cycles    uint64
	allocMB   float64
	span      time.Duration // between the two samples: what allocMB was allocated in
	maxPause  time.Duration
	liveMB    float64 // the live heap at the last cycle by the end
	cpu       float64 // the collector's CPU seconds in between (an estimate of the runtime's)
	assistCPU float64 // of which assists
	busyMark  float64 // of which the mark workers on Ps given to them (dedicated, fractional) and pauses
	idleMark  float64 // of which the mark workers on idle Ps
	scanMB    float64 // the scannable heap at the last cycle by the end
}

func gcBetween(a, b gcSample) gcDuring {
	d := gcDuring{span: b.at.Sub(a.at), cycles: b.cycles - a.cycles, allocMB: float64(b.alloc-a.alloc) / 1e6, liveMB: float64(b.live) / 1e6,
		cpu: b.cpu - a.cpu, assistCPU: b.assist - a.assist, busyMark: b.busyMark - a.busyMark, idleMark: b.idleMark - a.idleMark,
		scanMB: float64(b.scan) / 1e6}
	for i := len(b.pauses.Counts) - 1; i >= 0; i-- {
		if b.pauses.Counts[i] > a.pauses.Counts[i] {
			hi := b.pauses.Buckets[i+1]
			if hi > 3600 { // the last bucket is unbounded
				hi = b.pauses.Buckets[i]
			}
			d.maxPause = time.Duration(hi * float64(time.Second))
			break
		}
	}
	return d
}
