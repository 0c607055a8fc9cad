package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The shipped binary links no testing package: test helpers stay in tests (the bench suite's
// HTTPS receiver uses internal/loopbackca, not actors/webhook/webhooktest).
func TestTheBinaryLinksNoTesting(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, pkg := range strings.Fields(string(out)) {
		require.NotEqual(t, "testing", pkg, "cmd/herald links the testing package")
		require.False(t, strings.HasSuffix(pkg, "test") && strings.HasPrefix(pkg, "github.com/heraldhq/herald/"),
			"cmd/herald links the test helper package %s", pkg)
	}
}
