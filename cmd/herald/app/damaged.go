package app

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/heraldhq/herald/persistence"
)

// DamagedStoreError is a damaged database file met by a command that needs it: what is wrong
// with which file, what the command did not do, and the way out (docs/operations.md, Damaged
// data). It unwraps to the *persistence.DamagedError.
type DamagedStoreError struct {
	Damaged *persistence.DamagedError
	Dir     string // the data directory, as given
	Refusal string // what was not done, a sentence: "Herald will not start on it"
}

func (e *DamagedStoreError) Error() string {
	path := e.Damaged.Path
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return fmt.Sprintf("the database file %s is damaged: %s. %s. Restore the latest backup "+
		"(`herald backup` writes one; see docs/operations.md, \"Restoring a backup\"), or run `herald check --data %s` for the details",
		path, e.Damaged.Summary(), e.Refusal, e.Dir)
}

func (e *DamagedStoreError) Unwrap() error { return e.Damaged }

// DamagedStore returns err as a *DamagedStoreError when it is a damaged database file, else err.
func DamagedStore(err error, dir, refusal string) error {
	var de *persistence.DamagedError
	if errors.As(err, &de) {
		return &DamagedStoreError{Damaged: de, Dir: dir, Refusal: refusal}
	}
	return err
}
