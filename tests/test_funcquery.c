#include "ds_test.h"
Test(funcquery, placeholder) {}
