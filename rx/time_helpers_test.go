package rx_test

import "time"

// ms reads an Rx.NET test tick count as milliseconds of virtual time.
func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }
