package bpf

// Clang flags live here and only here; bpf2go adds -target, -g, -fno-ident
// and -fdebug-prefix-map so the output does not depend on the checkout path.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I/usr/include/x86_64-linux-gnu" -type tuple -type tuple4 -type profile -type match -type port_cfg -type slot_pcpu -type slot_shared -type flow_state -type flow_share -type slot_name -type bloom -type acl_key -type acl_key4 -type acl_val -type acl_shape -type acl_hdr -type acl_cnt -type acl_fb -type acl_name -type acl_ent4 -type acl_ent6 impair impair.c
