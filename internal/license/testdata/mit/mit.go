// Package mit is a module under the MIT license.
package mit

// Name names it.
const Name = "mit"
