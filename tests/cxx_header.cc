// The public header compiles as C++ (its macros are C-only, its functions
// are not) and the library links from a C++ translation unit.
#include <ura.h>

#include <cstdio>
#include <string_view>

int main()
{
	ura_value v = ura_v_i64(42);
	char name[URA_ATOM_MAX + 1];
	ura_atom a = 0;
	int ok1 = ura_atom_from("take", &a) == 0;
	int ok2 = std::string_view(ura_atom_name(a, name)) == "take";
	std::printf("%sok 1 - atom round trip from C++\n", ok1 && ok2 ? "" : "not ");
	std::printf("%sok 2 - value constructor from C++\n", v.u.i64 == 42 ? "" : "not ");
	std::printf("1..2\n");
	return ok1 && ok2 && v.u.i64 == 42 ? 0 : 1;
}
