// Package gpl is a module under the GPL 3.0, which is not allowed.
package gpl

// Name names it.
const Name = "gpl"
