long weight(int i);
long triangle(int n);
