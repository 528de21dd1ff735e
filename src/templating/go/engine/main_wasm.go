//go:build wasip1

package main

import "unsafe"

// The host (src/templating/go/worker-source.ts) writes a request into the buffer esi_alloc
// returns, calls esi_run with its length, and reads esi_run's result (length) from the
// address esi_result returns. Built as a WASI reactor: Go initialises once, then each
// call reuses the instance.

var input, output []byte

//go:wasmexport esi_alloc
func esiAlloc(n uint32) uint32 {
	if n == 0 {
		n = 1
	}
	input = make([]byte, n)
	return uint32(uintptr(unsafe.Pointer(&input[0])))
}

//go:wasmexport esi_run
func esiRun(n uint32) uint32 {
	output = Handle(input[:n])
	input = nil
	return uint32(len(output))
}

//go:wasmexport esi_result
func esiResult() uint32 {
	if len(output) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(&output[0])))
}

func main() {}
