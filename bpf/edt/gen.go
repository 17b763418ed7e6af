package edt

// Clang flags live here and only here (as in bpf/gen.go); bpf2go adds
// -target, -g, -fno-ident and -fdebug-prefix-map so the output does not
// depend on the checkout path.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I/usr/include/x86_64-linux-gnu" -type key -type cfg -type stats edt edt.c
