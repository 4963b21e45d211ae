#include "tap.h"
int main(void){return t_done();}
