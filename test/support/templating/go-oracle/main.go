package main

import (
	"bufio"
	"io"
	"os"
)

// The oracle of the differential tests: one JSON request per line on stdin, one JSON
// response per line on stdout.
func main() {
	r := bufio.NewReaderSize(os.Stdin, 1<<20)
	w := bufio.NewWriter(os.Stdout)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			w.Write(Handle(line))
			w.WriteByte('\n')
			w.Flush()
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			os.Exit(1)
		}
	}
}
