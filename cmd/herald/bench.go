package main

import (
	"io"

	"github.com/heraldhq/herald/bench"
)

func runBench(args []string, stdout, stderr io.Writer) error {
	return bench.Main(args, stdout, stderr)
}
