#include "ds_test.h"
Test(ctxconfig, placeholder) {}
