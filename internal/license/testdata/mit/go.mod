module example.com/mit

go 1.26
