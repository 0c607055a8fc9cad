package session_test

import (
	"os"
	"testing"

	"github.com/heraldhq/herald/persistence/pgtest"
)

// With HERALD_TEST_STORE=postgres the tests that start Herald run on PostgreSQL (storetest), on a
// server started for this test binary and stopped here.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
