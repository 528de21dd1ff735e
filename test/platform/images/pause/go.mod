module esi.local/pause

go 1.24
