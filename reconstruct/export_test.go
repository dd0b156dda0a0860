package reconstruct

// SpillMem is how much the replay's stores keep in memory before they move
// to a temporary file (tests lower it to exercise the file).
var SpillMem = &spillMem

// ReplayEvery is called every 65,536 events a replay reads.
var ReplayEvery = &replayEvery

// SweepMin is how many channels must be empty for the replay to sweep
// them (tests lower it to sweep all the time).
var SweepMin = &sweepMin

// UnsettledMin is how many unsettled messages a rank must hold for the
// replay to compact them (tests lower it to compact all the time).
var UnsettledMin = &unsettledMin

// PreInitMax is the most calls a rank may make before MPI_Init in a
// replay.
var PreInitMax = &preInitMax

// YieldTurns is how many operations a rank's replay goes through before it
// lets the others go first (tests lower it to interleave the ranks all the
// time).
var YieldTurns = &yieldTurns

// CutPruneMin is how many chain edges between collectives a Cut with a
// window holds before it drops those it can (tests lower it to drop them
// all the time).
var CutPruneMin = &cutPruneMin

// BatchFull is how many messages a group of a partitioned replay sends
// in a round at most.
var BatchFull = &batchFull
