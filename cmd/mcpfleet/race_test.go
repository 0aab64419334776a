//go:build race

package main

// raceEnabled says the test binary, and so every gateway process the
// tests start from it, runs under the race detector.
const raceEnabled = true
