#include "ds_test.h"
Test(devquery, placeholder) {}
