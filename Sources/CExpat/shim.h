/* Debian builds libexpat with DTD support (expat_config.h: XML_DTD), which
   is also what declares the billion-laughs protection settings. */
#ifndef XML_DTD
#define XML_DTD 1
#endif
#include <expat.h>
