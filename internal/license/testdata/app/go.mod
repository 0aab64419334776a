module example.com/app

go 1.26

require (
	example.com/gpl v0.0.0
	example.com/mit v0.0.0
)

replace (
	example.com/gpl => ../gpl
	example.com/mit => ../mit
)
