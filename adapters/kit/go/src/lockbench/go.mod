module lockbench

go 1.19
