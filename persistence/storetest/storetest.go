// Package storetest opens the store that the tests of other packages run on: bbolt in the
// directory they give, or, with HERALD_TEST_STORE=postgres (make test-postgres), a fresh schema
// of the PostgreSQL server that pgtest starts for the test binary. A package that uses it stops
// that server from its TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
package storetest

import (
	"testing"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/pgtest"
)

// Store returns the --store value (app.Config.Store) of a new, empty store for a test: "" (bbolt
// in the data directory) unless HERALD_TEST_STORE=postgres.
func Store(t testing.TB) string {
	t.Helper()
	if pgtest.Enabled() {
		return pgtest.URL(t)
	}
	return ""
}

// Open opens a new, empty store for a test: bbolt in dir, or PostgreSQL as Store says.
func Open(t testing.TB, dir string, opts persistence.Options) (*persistence.Store, error) {
	t.Helper()
	return persistence.OpenStore(Store(t), dir, opts)
}
