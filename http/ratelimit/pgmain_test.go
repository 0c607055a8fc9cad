package ratelimit_test

import (
	"os"
	"testing"

	"github.com/heraldhq/herald/persistence/pgtest"
)

// The shared quota's tests run on PostgreSQL, on a server started for this test binary and
// stopped here.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
