import { Firestore, FieldValue, Timestamp, GrpcStatus } from '@google-cloud/firestore';
import { KeyManagementServiceClient } from '@google-cloud/kms';
import * as grpc from '@grpc/grpc-js';
console.log(typeof Firestore, typeof FieldValue, typeof Timestamp, typeof GrpcStatus, typeof KeyManagementServiceClient, typeof grpc.credentials);
