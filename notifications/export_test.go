package notifications

// The fan-out's constants, for the tests that drive it on a virtual clock.
var (
	FanOutStall   = fanOutStall
	FanOutWorkers = fanOutWorkers
)
