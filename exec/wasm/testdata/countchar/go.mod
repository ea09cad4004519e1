module countchar

go 1.26
