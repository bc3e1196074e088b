# Where does torch.cuda._sleep fail: main thread, a new thread alone, a new thread after add_.
import sys, threading, torch
torch.cuda.init()
x = torch.zeros(1, device="cuda"); torch.cuda.synchronize()
def sleep_sync(tag):
    try:
        torch.cuda._sleep(1000); torch.cuda.synchronize(); print(tag, "ok")
    except Exception as e:
        print(tag, "FAILED", str(e).splitlines()[0])
def in_thread(f):
    t = threading.Thread(target=f); t.start(); t.join()
v = sys.argv[1]
if v == "main": sleep_sync("main")
if v == "thread": in_thread(lambda: sleep_sync("thread"))
if v == "thread-after-add": in_thread(lambda: (x.add_(1), sleep_sync("thread-after-add")))
if v == "thread-add": in_thread(lambda: (x.add_(1), torch.cuda.synchronize(), print("thread-add ok", x.item())))
