package types

import (
	"errors"
	"fmt"
)

// ErrCast marks a value that cannot be cast (CAST('abc' AS INT)); TRY_CAST
// turns errors carrying it into NULL. Test with errors.Is.
var ErrCast = errors.New("cast failed")

// ErrCorrupt marks bytes that do not decode as the expected type.
var ErrCorrupt = errors.New("corrupt encoding")

func errorf(format string, args ...any) error {
	return fmt.Errorf("sql types: "+format, args...)
}

func castErr(format string, args ...any) error {
	return fmt.Errorf("sql types: %w: "+format, append([]any{ErrCast}, args...)...)
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("sql types: %w: "+format, append([]any{ErrCorrupt}, args...)...)
}
