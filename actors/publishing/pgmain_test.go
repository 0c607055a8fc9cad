package publishing_test

import (
	"os"
	"testing"

	"github.com/heraldhq/herald/persistence/pgtest"
)

// With HERALD_TEST_STORE=postgres the tests that store data run on PostgreSQL (storetest); the
// tests of several nodes always do (pgtest.URL), on a server started for this test binary and
// stopped here.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
