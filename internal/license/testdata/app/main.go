// Command app is a binary that links a GPL module among allowed ones.
package main

import (
	"fmt"

	"example.com/gpl"
	"example.com/mit"
)

func main() { fmt.Println(mit.Name, gpl.Name) }
