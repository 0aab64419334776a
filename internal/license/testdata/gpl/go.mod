module example.com/gpl

go 1.26
