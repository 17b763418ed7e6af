package schema_test

import (
	"errors"
	"fmt"

	"github.com/switchyard-net/switchyard/schema"
)

func ExampleParse() {
	rec, err := schema.Parse("PORT", "Ethernet0", schema.Fields{"mtu": "09100", "mac": "02-00-00-00-00-AA"})
	if err != nil {
		panic(err)
	}
	fmt.Println(rec.Key(), rec.Fields()["mtu"], rec.Fields()["mac"])

	_, err = schema.Parse("STATIC_ROUTE", "10.0.0.1/8", schema.Fields{"nexthop": "10.0.0.2"})
	fmt.Println(err)

	var fe *schema.FieldError
	_, err = schema.Parse("PORT", "Ethernet0", schema.Fields{"mtu": "banana"})
	if errors.As(err, &fe) {
		fmt.Println(fe.Field, fe.Allowed)
	}
	fmt.Println(schema.ResultKey("FDB", "Vlan100|00:11:22:33:44:55"))
	// Output:
	// Ethernet0 9100 02:00:00:00:00:aa
	// STATIC_ROUTE|10.0.0.1/8: key: prefix has host bits set: use 10.0.0.0/8
	// mtu an integer 68-9216
	// FDB_TABLE|Vlan100:00:11:22:33:44:55
}
