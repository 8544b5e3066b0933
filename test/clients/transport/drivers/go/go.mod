module sigil.test/transport-driver

go 1.19
