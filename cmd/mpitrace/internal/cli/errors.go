package cli

import (
	"errors"
	"fmt"
)

// Exit statuses, documented in docs/cli.md.
const (
	ExitOK = 0
	// ExitError: the command failed (unreadable input, a failing tool).
	ExitError = 1
	// ExitUsage: bad flags or arguments.
	ExitUsage = 2
	// ExitDataLoss: the trace was read, but data were lost (only with --strict).
	ExitDataLoss = 3
	// ExitRegression: check found a time that grew beyond the tolerance.
	ExitRegression = 1
	// ExitShapeChanged: check found another run's shape (ranks, calls)
	// than the baseline's, and compared no time.
	ExitShapeChanged = 4
)

// FlagError is a usage error: the command's usage line follows it.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

func flagErrorf(format string, args ...any) error {
	return &FlagError{Err: fmt.Errorf(format, args...)}
}

// ExitCodeError ends the command with a given status after it has printed
// what it had to say (e.g. `record` passing on the application's status).
type ExitCodeError struct {
	Code int
	Err  error // printed when non-nil
}

func (e *ExitCodeError) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

func exitCode(err error) int {
	var ec *ExitCodeError
	if errors.As(err, &ec) {
		return ec.Code
	}
	var fe *FlagError
	if errors.As(err, &fe) {
		return ExitUsage
	}
	return ExitError
}
